package node

import (
	"os/exec"
	"syscall"
)

// childSupported: Supervise needs the parent-death signal, a Linux feature.
const childSupported = true

// setChildAttr puts the child in a process group of its own (so that a
// signal reaches what it started too) and asks the kernel to SIGKILL it when
// the thread that forks it exits (startLocked keeps that thread alive while
// the child runs): the child dies with the supervisor, even with kill -9.
func setChildAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// signalGroup sends sig to the process group pgid.
func signalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
