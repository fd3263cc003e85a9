package nodeid

// mutant, when set (only in builds with the nodeid_mutation tag, at init),
// is the rules every Provider whose Config carries none takes, one safety
// rule broken on purpose (named by mutation), so that the fault suite can
// show that its checks fail when a rule is broken. Production builds never
// set it.
var (
	mutant   *rules
	mutation string
)
