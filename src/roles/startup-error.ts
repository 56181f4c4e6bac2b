/** A start-up refusal the operator can fix (wrong role for the setup, schema behind): exit 2, no stack. */
export class StartupError extends Error {
  override name = "StartupError";
}
