/**
 * Compiles the test tokens with the npm `solc` package: contracts/<Name>.sol into
 * contracts/build/<Name>.json ({ contractName, compiler, abi, bytecode }), which are checked in so
 * tests never compile.
 *
 *   TestUSDT  — a fixed 6-decimal "Tether USD" (USDT) with the original Tether blacklist
 *               (`isBlackListed`, `addBlackList`, `removeBlackList`, `destroyBlackFunds`: the
 *               registry's `tether` freeze kind).
 *   TestToken — name, symbol, decimals and freeze style chosen at deployment (USDC, Binance-Peg
 *               18-decimal tokens…): 0 no freeze (`none`), 1 Circle's blacklist (`usdc`), 2 Tether's
 *               blocked list of USDT0 (`tether-blocked`).
 *
 *   npx tsx scripts/build-token.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const CONTRACTS = ["TestUSDT", "TestToken"] as const;

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

// Each contract is compiled on its own (one source per input), so adding a contract never changes
// another's artifact.
function build(name: string): void {
  const sourcePath = join(root, "contracts", `${name}.sol`);
  const outPath = join(root, "contracts", "build", `${name}.json`);
  const input = {
    language: "Solidity",
    sources: { [`${name}.sol`]: { content: readFileSync(sourcePath, "utf8") } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      // paris: no PUSH0, so the same bytecode also runs on EVMs that predate Shanghai.
      evmVersion: "paris",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };

  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  for (const e of output.errors ?? []) console.error(e.formattedMessage);
  if (errors.length > 0) process.exit(1);

  const contract = output.contracts[`${name}.sol`]?.[name];
  if (!contract) throw new Error(`${name} missing from the solc output`);

  const artifact = {
    contractName: name,
    compiler: `solc ${solc.version()}`,
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
  };
  writeFileSync(outPath, JSON.stringify(artifact, null, 2) + "\n");
  console.log(`wrote ${outPath}`);
}

for (const name of CONTRACTS) build(name);
