package nodeid

// applyMutation, when set (only in builds with the nodeid_mutation tag), breaks a
// safety rule on purpose in every new Provider through its testHooks, so that
// the fault suite can show that its checks fail when a rule is broken.
// Production builds never set it.
var applyMutation func(p *Provider)
