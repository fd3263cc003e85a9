//go:build !linux

package node

import (
	"errors"
	"os/exec"
	"syscall"
)

// childSupported: Supervise needs the parent-death signal, a Linux feature.
const childSupported = false

func setChildAttr(*exec.Cmd) {}

func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }
