import type { Hex } from "viem";
import { EvmChainAdapter } from "../../src/chains/evm/evm-adapter.js";
import { deployTestUsdt, sendMintTestUsdt, setAutomine, startAnvil } from "../support/chain/anvil.js";
import { onTimeSuite } from "./on-time-suite.js";

onTimeSuite("anvil (USDT-ERC20, 3 confirmations, automine off)", async () => {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  await setAutomine(anvil, false);
  return {
    network: "USDT-ERC20",
    anvil,
    adapter: new EvmChainAdapter({ rpcUrl: anvil.rpcUrl, tokenAddress: token, timeoutMs: 5_000 }),
    async send(address, amount) {
      await sendMintTestUsdt(anvil, token, address as Hex, amount);
    },
    stop: () => anvil.stop(),
  };
});
