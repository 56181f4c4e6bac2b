/** The sweeper's public face: its jobs, the sweeper itself, and its outcome handlers. */
export { type SweepJobDeps, sweepJobs } from "./jobs.js";
export { registerSweepOutcomes, Sweeper, type SweeperOptions } from "./sweeper.js";
