//go:build faults && !linux

package faults

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
