/** The sweeper's public face: its jobs, the sweeper itself, and its outcome handlers. */

export { ColdForwarder, type ColdForwarderOptions } from "./cold.js";
export { type HeldDecisionOptions, HeldDecisions, registerReturnOutcomes } from "./held-decisions.js";
export { type SweepJobDeps, sweepJobs } from "./jobs.js";
export {
  registerColdForwardOutcomes,
  registerSweepOutcomes,
  Sweeper,
  type SweeperOptions,
} from "./sweeper.js";
