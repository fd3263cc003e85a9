package broker

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/node"
)

const runHelp = `Usage: {prog} run [flags] -- CMD [ARGS...]

Runs one broker as {prog} serve does (the same flags and variables), and
once it holds a node ID and the wall clock is past the ID's floor, starts
CMD with NODEID_NODE_ID, NODEID_VERSION, NODEID_FLOOR_MS, NODEID_URL (the
broker's base URL: its /ids is NODEID_URL/ids) and, with --id-file, NODEID_ID_FILE in its environment, with
the caller's environment less the broker's own configuration (the NODEID_
variable of every flag below, NODEID_GOSSIP_KEY and NODEID_ETCD_PASSWORD
among them). CMD must exist when the broker starts. CMD runs in a process
group of its own and dies with the broker (even kill -9). Once CMD has
exited nobody reads the id file: the release follows without
--id-file-grace.

SIGTERM and SIGINT are forwarded to CMD's process group; CMD gets SIGKILL
after --child-stop-timeout. When CMD has exited, the broker releases the ID
and exits with CMD's status (0 when CMD died of the forwarded signal). When
the lease is lost, CMD gets SIGTERM at once and SIGKILL before the lease's
fence, so it is gone before another task may take the ID; then exit 3.

CMD should use the ID only while it runs, and either issue Snowflake IDs
itself (above NODEID_FLOOR_MS) or get them from NODEID_URL/ids, never both.
A broker that freezes (without dying) cannot kill CMD at the fence: CMD
closes that gap by also checking the id file's validUntilMs (--id-file).

Exit codes: CMD's status after a release (0 on a clean stop); 1 start-up or
run-time failure (the release failed, CMD could not start); 2 a bad flag or
variable, or a CMD that cannot be found; 3 the lease was lost (CMD killed).

Flags:
`

// child is the command run supervises.
type child struct {
	cmd *exec.Cmd
	cfg node.ChildConfig
}

// listening adds the broker's base URL to the child's environment, once the
// HTTP server has its address (a no-op on serve, which has no child).
func (c *child) listening(addr net.Addr) {
	if c == nil {
		return
	}
	c.cmd.Env = append(c.cmd.Env, node.EnvURL+"="+baseURL(addr))
}

// baseURL returns the base URL of the HTTP server on addr, on loopback when
// addr is a wildcard address.
func baseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// runRun is the run command of prog: serve's flags, "--", and the command to
// supervise. It returns the child's status, or the exit code of serve's
// failures.
func runRun(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	flags, command, found := cutArgs(args)
	cc := node.DefaultChildConfig()
	cfg, err := parseBrokerFlags(prog+" run", helpText(runHelp, prog), flags, os.LookupEnv, stdout, func(f *envflag.Set) {
		f.DurationVar(&cc.StopTimeout, "child-stop-timeout", cc.StopTimeout,
			"after SIGTERM or SIGINT, how long CMD has to exit before SIGKILL; after a lease loss CMD has at most lease-duration - safety-margin - renew-deadline - 100ms")
	})
	if err == nil {
		err = checkRunConfig(prog, cfg, &cc, found, command)
	}
	log, code, ok := parsedBroker(ctx, prog+" run", &cfg, err, stderr)
	if !ok {
		return code
	}
	// The signals are this command's own: forwarded to the child as they
	// come, each one also stops the broker (before the child starts, the
	// acquisition).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	fwd := make(chan os.Signal, 4)
	cc.Signals = fwd
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go forwardSignals(bctx, sigs, fwd, cancel)

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = childEnviron(os.Environ(), cfg.ownVars)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // the process's own: no copying that a grandchild could hold up
	b := newBroker(cfg, log)
	b.child = &child{cmd: cmd, cfg: cc}
	return exitCode(b.log, b.run(bctx))
}

// childEnviron returns environ without the broker's own configuration
// variables (own: every NODEID_<FLAG> it reads, the gossip key and the etcd
// password among them). The child gets that, the caller's environment, and
// the documented NODEID_* values of the ID (Supervise and child.listening
// add them).
func childEnviron(environ, own []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(own, k)
	})
}

// forwardSignals passes each signal on to fwd (dropped when fwd is full: the
// child has several waiting) and ends the broker's context, until ctx ends.
func forwardSignals(ctx context.Context, sigs <-chan os.Signal, fwd chan<- os.Signal, stop context.CancelFunc) {
	for {
		select {
		case s := <-sigs:
			select {
			case fwd <- s:
			default:
			}
			stop() // after the send: Supervise sees the signal when it sees ctx end
		case <-ctx.Done():
			return
		}
	}
}

// cutArgs splits args at the first "--" into the flags and the command.
func cutArgs(args []string) (flags, command []string, found bool) {
	i := slices.Index(args, "--")
	if i < 0 {
		return args, nil, false
	}
	return args[:i], args[i+1:], true
}

// checkRunConfig checks what run adds to serve: a command, and a child
// configuration that leaves a lost lease's child time to stop.
func checkRunConfig(prog string, cfg serveConfig, cc *node.ChildConfig, found bool, command []string) error {
	if !found || len(command) == 0 {
		return envflag.Usagef("no command: want %s run [flags] -- CMD [ARGS...]", prog)
	}
	if cc.StopTimeout <= 0 {
		return envflag.Usagef("--child-stop-timeout %v: want a positive duration", cc.StopTimeout)
	}
	nc := cfg.node // as fill validated it: a copy, with a stand-in task ID
	if nc.Provider.TaskID == "" {
		nc.Provider.TaskID = "task"
	}
	if err := nc.Validate(); err != nil {
		return envflag.Usagef("%v", err)
	}
	if err := cc.Validate(nc); err != nil {
		t := nc.Provider.Timings()
		return envflag.Usagef("%s", envflag.HumanDurations(fmt.Sprintf("--lease-duration %v - --safety-margin %v - --renew-deadline %v leaves %v between a lease loss and the fence: "+
			"too little for the child to stop (want above %v)", t.Lease, t.SafetyMargin, t.RenewDeadline, t.LossWindow(), cc.KillMargin)))
	}
	if _, err := exec.LookPath(command[0]); err != nil { // before an ID is taken for nothing
		return envflag.Usagef("CMD %q cannot be run: %v", command[0], err)
	}
	return nil
}
