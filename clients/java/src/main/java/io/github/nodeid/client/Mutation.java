package io.github.nodeid.client;

/**
 * Testing only: the rule an {@link IdFileGenerator} breaks on purpose
 * ({@link IdFileGenerator.Options#testingMutation(String)}), so that the
 * conformance suite and the tests can show they catch it.
 */
enum Mutation {
    /** Keep every rule. */
    NONE(""),
    /** Issue timestamps at or past the claim's validUntilMs (rule 1). */
    IGNORE_VALID_UNTIL("ignore-valid-until"),
    /** Issue timestamps at or below the claim's floorMs (rule 4). */
    IGNORE_FLOOR("ignore-floor"),
    /** Go on, with the new claim, after the nodeId or version changes (rule 3). */
    IGNORE_VERSION("ignore-version"),
    /** Go on with the last claim while the file is missing or unusable (rule 5). */
    IGNORE_MISSING("ignore-missing"),
    /** Issue timestamps below the generator's own last when the clock steps back (rule 4). */
    ALLOW_BACKWARDS("allow-backwards");

    final String flag;

    Mutation(String flag) {
        this.flag = flag;
    }

    /** Returns the mutation named name ("" or null: NONE). */
    static Mutation parse(String name) {
        if (name == null) {
            return NONE;
        }
        for (Mutation m : values()) {
            if (m.flag.equals(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown mutation \"" + name + "\": want one of ignore-valid-until, ignore-floor, ignore-version, ignore-missing, allow-backwards");
    }
}
