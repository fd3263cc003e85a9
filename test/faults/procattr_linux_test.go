//go:build faults

package faults

import "syscall"

// procAttr makes a broker die with the test process (a timeout's panic, a
// kill), instead of living on as an orphan holding a lease in a test bucket.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
