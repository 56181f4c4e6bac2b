/**
 * Compiles contracts/StablegateSweeper.sol with the npm `solc` package (its exact version, 0.8.37),
 * the settings the checked-in artifacts were built with: scripts/build-token.ts writes them
 * (contracts/build/StablegateSweeper.json, src/chains/evm/sweeper-code.ts) and
 * test/chains/sweeper-contract.test.ts recompiles to check they are reproducible. Writes nothing.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export const SWEEPER_SOURCE_PATH = join(root, "contracts", "StablegateSweeper.sol");

/**
 * paris: no PUSH0, the same bytecode runs on any EVM. `bytecodeHash: "none"`: no hash of the
 * metadata (which names the source path) in the bytecode, so the creation code, hence the CREATE2
 * address, depends on the source text and the compiler only.
 */
export const SWEEPER_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "paris",
  metadata: { bytecodeHash: "none" },
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
} as const;

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

export interface CompiledSweeper {
  abi: unknown[];
  bytecode: `0x${string}`;
  /** "solc 0.8.37+commit.…" */
  compiler: string;
}

/** Compiles StablegateSweeper; throws on a compiler error (warnings go to stderr). */
export function compileSweeper(): CompiledSweeper {
  const input = {
    language: "Solidity",
    sources: { "StablegateSweeper.sol": { content: readFileSync(SWEEPER_SOURCE_PATH, "utf8") } },
    settings: SWEEPER_SETTINGS,
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const problems = output.errors ?? [];
  for (const e of problems) if (e.severity !== "error") console.error(e.formattedMessage);
  const errors = problems.filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const contract = output.contracts?.["StablegateSweeper.sol"]?.StablegateSweeper;
  if (!contract) throw new Error("StablegateSweeper missing from the solc output");
  return {
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
    compiler: `solc ${solc.version()}`,
  };
}
