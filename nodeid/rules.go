package nodeid

// rules are the protocol's decisions that a mutation test breaks on
// purpose, one field each (a function or a value), so that the simulation
// and the fault suite can show that their checks catch a broken rule. A
// Provider takes its rules once, at construction (New): productionRules,
// unless a test hands in others through Config's unexported rules field
// (export_test.go) or the nodeid_mutation build chose a mutant at init
// (mutation_tagged.go). No predicate asks whether it is mutated: it calls
// its rule.
type rules struct{}

// productionRules returns the rules as designed.
func productionRules() rules { return rules{} }
