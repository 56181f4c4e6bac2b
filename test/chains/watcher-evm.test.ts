import type { Hex } from "viem";
import { EvmChainAdapter } from "../../src/chains/evm/evm-adapter.js";
import { deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { watcherSuite } from "./watcher-suite.js";

watcherSuite("anvil (USDT-ERC20)", async () => {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  return {
    network: "USDT-ERC20",
    anvil,
    endpointUrl: anvil.rpcUrl,
    adapter: (url, timeoutMs) =>
      new EvmChainAdapter({ rpcUrl: url, tokenAddress: token, timeoutMs, maxBlocksPerQuery: 7 }),
    async pay(address, amount) {
      return (await mintTestUsdt(anvil, token, address as Hex, amount)).transactionHash;
    },
    stop: () => anvil.stop(),
  };
});
