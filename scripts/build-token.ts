/**
 * Compiles contracts/TestUSDT.sol with the npm `solc` package into contracts/build/TestUSDT.json
 * ({ contractName, compiler, abi, bytecode }), which is checked in so tests never compile.
 *
 *   npx tsx scripts/build-token.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sourcePath = join(root, "contracts", "TestUSDT.sol");
const outPath = join(root, "contracts", "build", "TestUSDT.json");

const input = {
  language: "Solidity",
  sources: { "TestUSDT.sol": { content: readFileSync(sourcePath, "utf8") } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    // paris: no PUSH0, so the same bytecode also runs on EVMs that predate Shanghai.
    evmVersion: "paris",
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
}

const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
const errors = (output.errors ?? []).filter((e) => e.severity === "error");
for (const e of output.errors ?? []) console.error(e.formattedMessage);
if (errors.length > 0) process.exit(1);

const contract = output.contracts["TestUSDT.sol"]?.TestUSDT;
if (!contract) throw new Error("TestUSDT missing from the solc output");

const artifact = {
  contractName: "TestUSDT",
  compiler: `solc ${solc.version()}`,
  abi: contract.abi,
  bytecode: `0x${contract.evm.bytecode.object}`,
};
writeFileSync(outPath, JSON.stringify(artifact, null, 2) + "\n");
console.log(`wrote ${outPath}`);
