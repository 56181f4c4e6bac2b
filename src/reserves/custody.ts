/** The chains whose coins stablegate holds: every available chain but the sandbox simulator. */
export function custodialChains<C extends { kind: string }>(chains: { available(): C[] }): C[] {
  return chains.available().filter((c) => c.kind !== "simulator");
}
