package nodeid

// mutant, set only at init in builds with the nodeid_mutation tag, is the
// rules every Provider whose Config carries none takes, one safety rule broken
// on purpose (named by mutation), so that the fault suite can show that its
// checks catch it.
var (
	mutant   *rules
	mutation string
)
