package ctl

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string // added to the harness's (bucket set, prefix "")
		args []string
		want string // in stderr
	}{
		{"no command", nil, nil, "Usage: nodeidctl <command>"},
		{"unknown command", nil, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", nil, []string{"status", "--frob"}, "flag provided but not defined: -frob"},
		{"positional argument", nil, []string{"status", "7"}, `unexpected argument "7"`},
		{"no bucket", map[string]string{"NODEID_BUCKET": ""}, []string{"status"}, "--bucket (or NODEID_BUCKET) is required"},
		{"bad bucket", nil, []string{"status", "--bucket", "a/b"}, `--bucket "a/b" is not a bucket name`},
		{"bad endpoint", nil, []string{"status", "--s3-endpoint", "localhost:9000"}, `--s3-endpoint "localhost:9000"`},
		{"prefix without a slash", nil, []string{"status", "--prefix", "nodeid"}, `--prefix "nodeid" does not end with "/"`},
		{"prefix variable without a slash", map[string]string{"NODEID_PREFIX": "ids"}, []string{"status"}, `NODEID_PREFIX (--prefix) "ids" does not end with "/"`},
		{"bad duration flag", nil, []string{"status", "--clock-margin", "soon"}, `--clock-margin "soon": want a duration such as 15s, 500ms or 2m`},
		{"negative margin", nil, []string{"status", "--clock-margin=-1s"}, "--clock-margin -1s is negative"},
		{"bad duration env", map[string]string{"NODEID_CLOCK_MARGIN": "soon"}, []string{"status"},
			`environment variable NODEID_CLOCK_MARGIN="soon": invalid value for --clock-margin: want a duration such as 15s, 500ms or 2m`},
		{"negative margin env", map[string]string{"NODEID_CLOCK_MARGIN": "-2s"}, []string{"status"},
			"NODEID_CLOCK_MARGIN (--clock-margin) -2s is negative"},
		{"zero max lease", nil, []string{"status", "--max-lease-duration", "0s"}, "--max-lease-duration 0s is outside (0, 24h]"},
		{"bad bool env", map[string]string{"NODEID_S3_PATH_STYLE": "maybe"}, []string{"status"},
			`NODEID_S3_PATH_STYLE="maybe": invalid value for --s3-path-style`},
		{"bad region env", map[string]string{"NODEID_REGION": "EU West"}, []string{"status"}, `NODEID_REGION (--region) "EU West"`},
		{"unknown store", nil, []string{"status", "--store", "zk"}, `--store "zk": want s3, etcd, azblob, gcs or k8s`},
		{"gcs flags without gcs", nil, []string{"status", "--gcs-bucket", "leases"}, "the --gcs-* flags need --store gcs"},
		{"gcs without a bucket", map[string]string{"NODEID_BUCKET": ""}, []string{"status", "--store", "gcs"}, "--gcs-bucket is required"},
		{"gcs with etcd", map[string]string{"NODEID_BUCKET": "", "NODEID_ETCD_ENDPOINTS": "h:1"}, []string{"status", "--store", "gcs", "--gcs-bucket", "leases"},
			"the --etcd-* flags need --store etcd (--store is gcs"},
		{"azblob flags without azblob", nil, []string{"status", "--azblob-container", "leases"}, "the --azblob-* flags need --store azblob"},
		{"azblob with a bucket", nil, []string{"status", "--store", "azblob", "--azblob-account-url", "https://a.blob.core.windows.net",
			"--azblob-container", "leases", "--azblob-sas", "sv=1"}, "the S3 flags (--bucket, --s3-endpoint) need --store s3 (--store is azblob"},
		{"azblob with etcd", map[string]string{"NODEID_BUCKET": "", "NODEID_ETCD_ENDPOINTS": "h:1"}, []string{"status", "--store", "azblob"},
			"the --etcd-* flags need --store etcd (--store is azblob"},
		{"azblob without account", map[string]string{"NODEID_BUCKET": "", "NODEID_STORE": "azblob"}, []string{"status"}, "AccountURL is required"},
		{"azblob bad container", map[string]string{"NODEID_BUCKET": ""}, []string{"status", "--store", "azblob",
			"--azblob-account-url", "https://a.blob.core.windows.net", "--azblob-container", "Leases", "--azblob-sas", "sv=1"}, `Container "Leases" is not a container name`},
		{"azblob two credentials", map[string]string{"NODEID_BUCKET": "", "NODEID_AZBLOB_SAS": "sv=1"}, []string{"status", "--store", "azblob",
			"--azblob-account-url", "https://a.blob.core.windows.net", "--azblob-container", "leases", "--azblob-account-name", "a", "--azblob-account-key", "k"}, "one credential"},
		{"release without id", nil, []string{"release"}, "--id is required"},
		{"release negative id", nil, []string{"release", "--id", "-3"}, "--id -3 is outside"},
		{"release bad id", nil, []string{"release", "--id", "x"}, `--id "x": want a whole number such as 7`},
		{"repair without floor", nil, []string{"repair", "--id", "3"}, "--floor is required"},
		{"repair huge floor", nil, []string{"repair", "--id", "3", "--floor", "9007199254740993"}, "--floor 9007199254740993 is outside"},
		{"repair negative version", nil, []string{"repair", "--id", "3", "--floor", "1", "--version", "-2"}, "--version -2 is negative"},
		{"resize without size", nil, []string{"resize"}, "--cluster-size is required"},
		{"resize zero", nil, []string{"resize", "--cluster-size", "0"}, "--cluster-size 0 is below 1"},
		{"resize ignores env size", map[string]string{"NODEID_CLUSTER_SIZE": "8"}, []string{"resize"}, "--cluster-size is required"},
		{"init size above node bits", nil, []string{"init", "--cluster-size", "2048"}, "--cluster-size 2048 is outside 1..1024"},
		{"init size env", map[string]string{"NODEID_CLUSTER_SIZE": "many"}, []string{"init"},
			`NODEID_CLUSTER_SIZE="many": invalid value for --cluster-size`},
		{"init bits sum", nil, []string{"init", "--node-bits", "12"}, "must sum to 63"},
		{"init node bits", nil, []string{"init", "--node-bits", "23", "--timestamp-bits", "28"}, "--node-bits 23 is above 22"},
		{"init zero bits", nil, []string{"init", "--sequence-bits", "0"}, "--sequence-bits 0 must be at least 1"},
		{"init negative epoch", nil, []string{"init", "--epoch-ms=-1"}, "--epoch-ms -1 is outside"},
		{"init max lease below 1s", nil, []string{"init", "--max-lease-duration", "500ms"}, "--max-lease-duration 500ms is below 1s"},
		{"resize max lease below 1s env", map[string]string{"NODEID_MAX_LEASE_DURATION": "900ms"}, []string{"resize", "--cluster-size", "8"},
			"NODEID_MAX_LEASE_DURATION (--max-lease-duration) 900ms is below 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for k, v := range tc.env {
				h.env[k] = v
			}
			code, stdout, stderr := h.run(tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitUsage, stdout, stderr)
			}
			contains(t, "stderr", stderr, tc.want)
			if h.mem.Count("get")+h.mem.Count("list")+h.writes() != 0 {
				t.Errorf("a usage error reached the store")
			}
		})
	}
}

func TestHelp(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{{"--help"}, {"help"}} {
		stdout, _ := h.mustRun(ExitOK, args...)
		contains(t, "help", stdout, "Commands:", "status", "init", "release", "repair", "resize", "NODEID_<FLAG>")
	}
	for _, cmd := range []string{"status", "init", "release", "repair", "resize"} {
		stdout, _ := h.mustRun(ExitOK, cmd, "--help")
		contains(t, cmd+" --help", stdout, "Usage: nodeidctl "+cmd, "-bucket", "[$NODEID_BUCKET]", "-clock-margin")
		again, _ := h.mustRun(ExitOK, "help", cmd)
		if again != stdout {
			t.Errorf("help %s differs from %s --help", cmd, cmd)
		}
	}
}

func TestFlagWinsOverEnv(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantPrefix string
		wantPath   bool
		wantBucket string
	}{
		{"env only", map[string]string{"NODEID_PREFIX": "env/", "NODEID_S3_PATH_STYLE": "true"}, nil, "env/", true, "test-bucket"},
		{"flag wins", map[string]string{"NODEID_PREFIX": "env/", "NODEID_S3_PATH_STYLE": "true"},
			[]string{"--prefix", "flag/", "--s3-path-style=false", "--bucket", "other"}, "flag/", false, "other"},
		{"empty env prefix is the root", map[string]string{"NODEID_PREFIX": ""}, nil, "", false, "test-bucket"},
		{"default prefix", map[string]string{}, nil, "nodeid/", false, "test-bucket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			delete(h.env, "NODEID_PREFIX")
			for k, v := range tc.env {
				h.env[k] = v
			}
			h.mustRun(ExitOK, append([]string{"status"}, tc.args...)...)
			if c := h.opened; c.Prefix != tc.wantPrefix || c.UsePathStyle != tc.wantPath || c.Bucket != tc.wantBucket {
				t.Fatalf("store config = bucket %q prefix %q path-style %v", c.Bucket, c.Prefix, c.UsePathStyle)
			}
		})
	}
}

// durationFlag matches a duration flag in the help, the name and whether a
// variable may set it: "  -clock-margin duration\n    ... [$NODEID_CLOCK_MARGIN]".
var durationFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+) duration\n((?:    .*\n)*)`)

// TestBadDurationEveryCommand: every duration flag of every command, given a
// bare number on the command line or in its variable, says it wants a
// duration, naming the flag or the variable, and exits 2 before any request.
func TestBadDurationEveryCommand(t *testing.T) {
	for _, c := range commands() {
		help, _ := newHarness(t).mustRun(ExitOK, c.name, "--help")
		flags := durationFlag.FindAllStringSubmatch(help, -1)
		if len(flags) == 0 {
			t.Fatalf("nodeidctl %s --help shows no duration flag:\n%s", c.name, help)
		}
		for _, fl := range flags {
			name, usage := fl[1], fl[2]
			runs := map[string]func(h *harness) []string{
				"flag": func(h *harness) []string { return []string{c.name, "--" + name, "15"} },
			}
			want := map[string]string{"flag": `--` + name + ` "15": want a duration such as 15s, 500ms or 2m`}
			if v := "NODEID_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")); strings.Contains(usage, "[$"+v+"]") {
				runs["variable"] = func(h *harness) []string { h.env[v] = "15"; return []string{c.name} }
				want["variable"] = `environment variable ` + v + `="15": invalid value for --` + name + `: want a duration such as 15s, 500ms or 2m`
			}
			for how, args := range runs {
				h := newHarness(t)
				code, stdout, stderr := h.run(args(h)...)
				line := "nodeidctl " + c.name + ": " + want[how] + "\nRun 'nodeidctl " + c.name + " --help' for usage.\n"
				if code != ExitUsage || stderr != line || stdout != "" {
					t.Errorf("nodeidctl %s, --%s by %s: exit %d, want %d\nstderr: %q\nwant:   %q\nstdout: %s", c.name, name, how, code, ExitUsage, stderr, line, stdout)
				}
				if h.mem.Count("get")+h.mem.Count("list")+h.writes() != 0 {
					t.Errorf("nodeidctl %s, --%s by %s: a usage error reached the store", c.name, name, how)
				}
			}
		}
	}
}

// TestAzblobCredential: --store azblob opens the store with shared key when
// given a key, and with Env.AzureCredential's token credential when given
// neither a key nor a SAS; a chain that cannot be made fails the command
// (exit 1) before the store is opened.
func TestAzblobCredential(t *testing.T) {
	var opened []azblobstore.Config
	made := 0
	env := Env{
		LookupEnv: func(k string) (string, bool) {
			v, ok := map[string]string{"NODEID_STORE": "azblob", "NODEID_AZBLOB_ACCOUNT_URL": "https://a.blob.core.windows.net",
				"NODEID_AZBLOB_CONTAINER": "leases"}[k]
			return v, ok
		},
		OpenAzblob: func(_ context.Context, cfg azblobstore.Config) (lease.Store, error) {
			opened = append(opened, cfg)
			return storetest.NewMemStore(), nil
		},
		AzureCredential: func() (azcore.TokenCredential, error) { made++; return fakeToken{}, nil },
	}
	run := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, &out, &errb, env); code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out.String(), errb.String())
		}
		return errb.String()
	}
	run(ExitOK, "status", "--azblob-account-name", "a", "--azblob-account-key", "a2V5")
	run(ExitOK, "status")
	if len(opened) != 2 || opened[0].AccountKey != "a2V5" || opened[0].Credential != nil || opened[1].AccountKey != "" || opened[1].Credential == nil || made != 1 {
		t.Fatalf("opened %+v, made %d credentials", opened, made)
	}
	env.AzureCredential = func() (azcore.TokenCredential, error) {
		return nil, errors.New("invalid AZURE_TOKEN_CREDENTIALS value")
	}
	contains(t, "stderr", run(ExitFailed, "status"), "without --azblob-account-key or --azblob-sas", "invalid AZURE_TOKEN_CREDENTIALS value")
	if len(opened) != 2 {
		t.Errorf("the store was opened without a credential")
	}
}

type fakeToken struct{}

func (fakeToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t"}, nil
}
