// Retention applied by a store as it opens (docs/ARCHITECTURE.md, "Retention"): the session layer keeps
// the hook, the maintenance layer, which knows how, registers it (as rewind registers its recovery step).
import type { RetentionOutcome, RetentionPolicy } from "../core/retention-policy.js";

// `store` is the SessionStore opening: typed loosely so this file need not import it (no cycle).
type ApplyRetention = (store: any, policy: RetentionPolicy) => Promise<RetentionOutcome>;

let apply: ApplyRetention | undefined;

/** Called once by src/maintenance/retention.ts as it loads; the public entry imports it. */
export function registerRetentionOnOpen(fn: ApplyRetention): void {
  apply = fn;
}

/** The registered way to apply a policy; undefined when the maintenance layer was never loaded. */
export function retentionOnOpen(): ApplyRetention | undefined {
  return apply;
}
