package broker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

const localS3Help = `Usage: {prog} local-s3 [flags]

Serves an S3 server in memory (gofakes3, which honours If-None-Match and
If-Match) with one bucket, until SIGTERM or SIGINT, for trying nodeid on one
machine with several processes: brokers (serve, run) and nodeidctl point
--s3-endpoint at it, with --s3-path-style, and any credentials (the AWS
SDK needs some to sign). It takes no node ID. Everything is lost when it
stops. For demos and tests only.

It prints the flags and variables to use on stdout, and logs "local S3
listening" with its address on stderr.

Flags:
`

// runLocalS3 is the local-s3 command of prog.
func runLocalS3(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " local-s3"
	f := envflag.New(name, os.LookupEnv)
	addr := f.String("addr", "127.0.0.1:9000", "address to listen on (port 0: a free one)")
	bucket := f.String("bucket", s3fake.DefaultBucket, "the bucket to create")
	f.Bind("bucket") // the brokers' NODEID_BUCKET, if set
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, helpText(localS3Help, prog))
			f.PrintDefaultsTo(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		fmt.Fprintf(stderr, "%s: --addr %q is not host:port: %v\n", name, *addr, err)
		return exitUsage
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	srv, err := s3fake.Start(s3fake.Config{Addr: *addr, Bucket: *bucket, Logger: log.With("component", "local-s3")})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitFailure
	}
	log.Info("local S3 listening", "addr", strings.TrimPrefix(srv.URL(), "http://"), "endpoint", srv.URL(), "bucket", srv.Bucket())
	fmt.Fprintf(stdout, "local S3 (in memory) at %s, bucket %s; for brokers and nodeidctl:\n"+
		"  export AWS_ACCESS_KEY_ID=any AWS_SECRET_ACCESS_KEY=any AWS_EC2_METADATA_DISABLED=true\n"+
		"  --s3-endpoint %s --s3-path-style --bucket %s\n", srv.URL(), srv.Bucket(), srv.URL(), srv.Bucket())
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		log.Error("local S3 did not stop cleanly", "err", err)
		return exitFailure
	}
	log.Info("stopped")
	return exitOK
}
