// Package metrics holds the Prometheus metrics of a nodeid broker: the lease
// (state, node ID and version, acquisitions, renewals, failures, losses,
// anomalies), the S3 requests behind it (by operation and outcome, through
// [Metrics.Store], a lease.Store decorator) and the IDs served.
//
// Everything is registered on a registry of its own ([Metrics.Registry]), never
// on the global one, so two brokers in one process (tests, the demo) do not
// collide. [*Metrics] implements nodeid.Observer: pass it as
// nodeid.Config.Observer.
//
// Metric names (all prefixed nodeid_):
//
//	lease_state{state}                  1 for the current state, 0 for the others
//	node_id, node_version               the held node ID (-1 before one) and its version
//	lease_acquisitions_total            claims taken
//	lease_acquire_duration_seconds      time Acquire took (histogram)
//	lease_renewals_total                successful renewals
//	lease_renewal_failures_total        failed renewal attempts (retried until the renew deadline)
//	lease_renew_duration_seconds        latency of successful renewals (histogram)
//	lease_lost_total                    claims that ended without a release
//	lease_released_total                claims released
//	lease_anomalies_total               corrupt or otherwise untakeable lease objects seen
//	s3_requests_total{operation,outcome} store requests: operation list, get, create or update;
//	                                    outcome ok, not_found, precondition_failed, unknown_outcome or error
//	s3_request_duration_seconds{operation} store request latency (histogram)
//	ids_issued_total                    IDs handed out
//	ids_fenced_refusals_total           ID requests refused because the broker was not serving
//
// The Go runtime and process collectors are registered too (go_*, process_*).
package metrics
