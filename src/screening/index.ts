// The screening provider's public face (issue #40, docs/screening.md): one client, built once per
// process by the composition, asked about deposit senders and withdrawal/payout destinations; and
// the one check of an address against the token's freeze list and that provider.
export {
  type AddressBlock,
  addressBlock,
  describeBlock,
  ScreeningUnavailableError,
} from "./address-check.js";
export type {
  Screening,
  ScreeningDecision,
  ScreeningDirection,
  ScreeningQuery,
  ScreeningRecorder,
  ScreeningSubject,
} from "./provider.js";
export { createScreening, type ScreeningOptions } from "./screening.js";
