// Package storetest helps test code that uses a [lease.Store], and tests stores:
//
//   - [MemStore], an in-memory store with an injectable clock that mimics S3
//     (ETags are MD5 of the body, times are whole seconds), conditional
//     reads included ([StaleConditionalReads]: as through a stale cache);
//   - [FaultStore], a wrapper that injects latency, errors and ambiguous writes
//     (the write lands but the caller gets an unknown-outcome error), and can
//     be killed ([FaultStore.Kill]: every call fails without reaching the store);
//   - [Run], the conformance suite every Store implementation must pass;
//   - [CheckLinearizable], which checks a history of store calls, and what
//     records one: [Recorder] in this process, or [Record] into a [CallLog]
//     file that another process reads back ([ReadCallLog]; the broker's
//     --debug-store-history, for the fault suite).
package storetest
