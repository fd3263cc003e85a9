package health

import "errors"

// Checker reports the health of a component: nil when healthy, else an error
// saying why not. Check must be fast, must not block, and must be safe for
// concurrent use: it runs on every request.
type Checker interface {
	Check() error
}

// CheckerFunc makes a function a Checker.
type CheckerFunc func() error

// Check calls f.
func (f CheckerFunc) Check() error { return f() }

// All returns a Checker that is healthy when every one of checkers is. It runs
// them all, in order, and returns their errors joined (errors.Is finds each).
// Nil checkers are skipped; with none, it is always healthy.
func All(checkers ...Checker) Checker {
	cs := make([]Checker, 0, len(checkers))
	for _, c := range checkers {
		if c != nil {
			cs = append(cs, c)
		}
	}
	return CheckerFunc(func() error {
		var errs []error
		for _, c := range cs {
			if err := c.Check(); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}
