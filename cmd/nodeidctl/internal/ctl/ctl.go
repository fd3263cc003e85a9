// Package ctl is nodeidctl, the operator's command for a nodeid lease bucket:
// status, check, init, release, repair and resize. [Run] is the whole command, with its
// surroundings (environment, store, clock) passed in through [Env], so tests run
// it in-process against an in-memory store or an embedded S3 server; main only
// wires it to the process.
//
// Every write nodeidctl makes is conditional (If-None-Match: * or If-Match on the
// ETag it read), carries a fresh writeId, and is never retried blindly: a write
// whose answer was lost is resolved by reading the object back. Leases are judged
// on the store's clock only (Date - Last-Modified of one GET, or the liveness
// a store such as etcd judges itself: lease.StateOf), never against the
// operator's wall clock.
package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
)

// Exit codes of [Run].
const (
	// ExitOK: the command did what was asked (or found nothing to do).
	ExitOK = 0
	// ExitFailed: the command refused, or a store operation failed.
	ExitFailed = 1
	// ExitUsage: a bad command line or environment variable.
	ExitUsage = 2
)

// readParallelism bounds the GETs in flight when reading every lease object.
const readParallelism = 16

// Env is what the command takes from its surroundings. [DefaultEnv] is the
// process's; tests substitute their own. A nil field means the default.
type Env struct {
	// LookupEnv reads an environment variable (os.LookupEnv). Only the NODEID_*
	// variables that stand in for flags are read through it; the AWS SDK reads
	// its own (credentials, AWS_REGION) from the process.
	LookupEnv func(key string) (string, bool)
	// OpenStore returns the store for a validated configuration (OpenS3).
	OpenStore func(ctx context.Context, cfg s3store.Config) (lease.Store, error)
	// OpenEtcd returns the store for --store etcd (OpenEtcd).
	OpenEtcd func(ctx context.Context, cfg etcdstore.Config) (lease.Store, error)
	// OpenAzblob returns the store for --store azblob (OpenAzblob).
	OpenAzblob func(ctx context.Context, cfg azblobstore.Config) (lease.Store, error)
	// AzureCredential makes the Microsoft Entra ID token credential of
	// --store azblob without a key or a SAS (nil:
	// azblobflag.DefaultCredential).
	AzureCredential azblobflag.NewCredential
	// OpenGCS returns the store for --store gcs (OpenGCS).
	OpenGCS func(ctx context.Context, cfg gcsstore.Config) (lease.Store, error)
	// OpenK8s returns the store for --store k8s (OpenK8s).
	OpenK8s func(ctx context.Context, cfg k8sstore.Config) (lease.Store, error)
	// Now is the operator's wall clock (time.Now). It only stamps the manifest's
	// createdAt (for humans), as the provider's own wall clock does; it never
	// judges a lease.
	Now func() time.Time
}

// DefaultEnv returns the process's environment, S3 through [OpenS3] and the
// system clock.
func DefaultEnv() Env {
	return Env{LookupEnv: os.LookupEnv, OpenStore: OpenS3, OpenEtcd: OpenEtcd, OpenAzblob: OpenAzblob, OpenGCS: OpenGCS, OpenK8s: OpenK8s, Now: time.Now}
}

// OpenAzblob returns an Azure Blob store for cfg after probing the container
// with azblobstore.Store.Check, so a missing container, a refused credential
// or a wrong account URL are reported before anything else happens.
func OpenAzblob(ctx context.Context, cfg azblobstore.Config) (lease.Store, error) {
	st, err := azblobstore.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// OpenGCS returns a Cloud Storage store for cfg after probing the bucket
// with gcsstore.Store.Check, so a missing bucket, refused credentials or a
// wrong endpoint are reported before anything else happens.
func OpenGCS(ctx context.Context, cfg gcsstore.Config) (lease.Store, error) {
	st, err := gcsstore.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// OpenK8s returns a store on Kubernetes Leases for cfg after
// k8sstore.Store.Check, so refused credentials, missing permissions, a
// missing namespace or an unreachable apiserver are reported before anything
// else happens.
func OpenK8s(ctx context.Context, cfg k8sstore.Config) (lease.Store, error) {
	st, err := k8sstore.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// OpenEtcd returns an etcd store for cfg after checking that etcd answers.
// The connection stays open until the process exits.
func OpenEtcd(ctx context.Context, cfg etcdstore.Config) (lease.Store, error) {
	st, err := etcdstore.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// OpenS3 returns an S3 store for cfg after probing the bucket with
// s3store.Store.Check, so a missing bucket, missing credentials or a wrong
// endpoint are reported before anything else happens.
func OpenS3(ctx context.Context, cfg s3store.Config) (lease.Store, error) {
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// app is one run of the command.
type app struct {
	stdout, stderr io.Writer
	env            Env
}

// command is one subcommand.
type command struct {
	name     string
	synopsis string // the flags after "nodeidctl NAME"
	summary  string // one line for the command list
	help     string // paragraphs printed by --help before the flags
	run      func(a *app, ctx context.Context, cmd *command, args []string) error
}

// commands returns the subcommands in the order of the usage text.
func commands() []*command {
	return []*command{statusCommand(), checkCommand(), initCommand(), releaseCommand(), repairCommand(), resizeCommand(), leadersCommand()}
}

// Run runs nodeidctl with args (without the program name) and returns the exit
// code: [ExitOK], [ExitFailed] or [ExitUsage]. Results go to stdout, errors and
// notes to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, env Env) int {
	def := DefaultEnv()
	if env.LookupEnv == nil {
		env.LookupEnv = def.LookupEnv
	}
	if env.OpenStore == nil {
		env.OpenStore = def.OpenStore
	}
	if env.OpenEtcd == nil {
		env.OpenEtcd = def.OpenEtcd
	}
	if env.OpenAzblob == nil {
		env.OpenAzblob = def.OpenAzblob
	}
	if env.OpenGCS == nil {
		env.OpenGCS = def.OpenGCS
	}
	if env.Now == nil {
		env.Now = def.Now
	}
	a := &app{stdout: stdout, stderr: stderr, env: env}
	if len(args) == 0 {
		a.usage(stderr)
		return ExitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			a.usage(stdout)
			return ExitOK
		}
		name, rest = rest[0], []string{"--help"}
	}
	for _, c := range commands() {
		if c.name == name {
			return a.exit(c, c.run(a, ctx, c, rest))
		}
	}
	fmt.Fprintf(stderr, "nodeidctl: unknown command %q\n\n", name)
	a.usage(stderr)
	return ExitUsage
}

// exit reports err on stderr and maps it to an exit code.
func (a *app) exit(c *command, err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(a.stderr, "nodeidctl %s: %s\nRun 'nodeidctl %s --help' for usage.\n", c.name, message(err), c.name)
		return ExitUsage
	default:
		fmt.Fprintf(a.stderr, "nodeidctl %s: %s\n", c.name, message(err))
		return ExitFailed
	}
}

// usage prints the list of commands.
func (a *app) usage(w io.Writer) {
	fmt.Fprint(w, `nodeidctl operates a nodeid lease bucket: the cluster manifest and one lease
object per node ID, under a prefix of an S3 bucket.

Usage: nodeidctl <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every command takes the S3 flags --bucket, --prefix, --region, --s3-endpoint,
--s3-path-style and the expiry flags --clock-margin, --max-lease-duration; each
may also be set by an environment variable NODEID_<FLAG> (NODEID_BUCKET,
NODEID_S3_ENDPOINT, ...), and a flag wins over its variable. Credentials come
from the default AWS chain (environment, shared files, ECS task role).
--store etcd takes --etcd-* instead of the S3 flags, --store azblob (Azure
Blob Storage) --azblob-*.

Exit codes: 0 done, 1 refused or failed, 2 bad usage.
Run 'nodeidctl <command> --help' for the flags of a command.
`)
}

// note prints a line on stderr: a warning or a hint, never a result.
func (a *app) note(format string, args ...any) {
	fmt.Fprintf(a.stderr, "note: "+format+"\n", args...)
}

// out prints a result line on stdout.
func (a *app) out(format string, args ...any) {
	fmt.Fprintf(a.stdout, format+"\n", args...)
}
