package snowflake

import "errors"

// Sentinel errors. Test for them with errors.Is: the errors returned carry
// details (amounts, field names) around them.
var (
	// ErrFenced means the fence is down (Config.Fence reports not Valid) or
	// the generator was stopped: this process may no longer issue IDs with its
	// node ID. It is returned at once, without waiting.
	ErrFenced = errors.New("snowflake: fenced: the node ID is no longer held")

	// ErrClockBackwards means the clock is behind the floor or behind a
	// timestamp already issued by more than Config.MaxClockWait. The error
	// says by how much.
	ErrClockBackwards = errors.New("snowflake: clock is behind the floor or the last issued timestamp")

	// ErrReservationExhausted means the clock has passed the reservation
	// (Config.Reservation) and the reservation did not move within
	// Config.MaxReservationWait: the lease is not being renewed, or the
	// clock runs ahead of the clock that renews it.
	ErrReservationExhausted = errors.New("snowflake: timestamp reservation exhausted")

	// ErrTimeOverflow means the clock has passed the last timestamp the
	// layout can encode (Layout.MaxTimeMs).
	ErrTimeOverflow = errors.New("snowflake: timestamp overflows the layout")

	// ErrInvalidLayout means a Layout failed Validate.
	ErrInvalidLayout = errors.New("snowflake: invalid layout")

	// ErrInvalidConfig means a Config failed validation in New.
	ErrInvalidConfig = errors.New("snowflake: invalid config")

	// ErrInvalidID means a text, JSON or int64 value is not an ID (or not
	// one of the layout at hand).
	ErrInvalidID = errors.New("snowflake: invalid ID")
)
