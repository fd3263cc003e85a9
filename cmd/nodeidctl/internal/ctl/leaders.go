package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/nodeid"
)

func leadersCommand() *command {
	return &command{
		name:     "leaders",
		synopsis: "[--json] [common flags]",
		summary:  "list every election under the prefix with its leader, term and age (never writes)",
		help: `
Lists the elections under <prefix>elections/ (nodeid-broker serve --elect NAME,
package election) and GETs each one's lease object: its leader (the holder's
task identity) and the value it campaigned with (its address, say; - when
none), term (the fencing token, +1 at each election), state (held =
a live leader, expired, free, corrupt) judged on the store's clock as for
status, and age (time since the last write, on the store's clock).

Exit 0 when every election was read, 1 when some could not be.`,
		run: runLeaders,
	}
}

func runLeaders(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	asJSON := f.Bool("json", false, "print JSON: a list of {name, leader, value (absent when none), term, live, state, age (ns)}")
	st, err := a.setup(ctx, f, &c, args, nil)
	if err != nil {
		return err
	}
	cfg := nodeid.DefaultConfig()
	cfg.ClockMargin, cfg.MaxLeaseDuration = c.clockMargin, c.maxLease
	cfg.LeaseDuration = min(cfg.LeaseDuration, c.maxLease)
	e, err := election.New(st, cfg)
	if err != nil {
		return err
	}
	infos, rerr := e.All(ctx)
	if infos == nil {
		infos = []election.Info{}
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(infos); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTATE\tLEADER\tVALUE\tTERM\tAGE")
		for _, i := range infos {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%v\n", i.Name, i.State, orDash(i.Leader), orDash(i.Value), i.Term, i.Age.Round(time.Second))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return rerr
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
