/**
 * TRON's energy engine (issue #38): the resource account's stake delegated to a sending address for
 * one transfer and taken back (engine.ts), the policy of waiting or burning (policy.ts), its jobs.
 */
export { EnergyEngine, type EnergyEngineOptions, type SweepPlan } from "./engine.js";
export { type EnergyJobDeps, energyEngineOf, energyJobs, registerEnergyOutcomes } from "./jobs.js";
export { chooseEnergy, type EnergyPolicy, energyPolicyOf, nextStake } from "./policy.js";
