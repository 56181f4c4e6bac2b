import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainAdapter } from "../../src/chains/tron/tron-adapter.js";
import { deployTestUsdt, mintTestUsdt, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator } from "../support/chain/tron-emulator.js";
import { watcherSuite } from "./watcher-suite.js";

watcherSuite("the TRON emulator (USDT-TRC20)", async () => {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  const emulator = await startTronEmulator(anvil, token);
  return {
    network: "USDT-TRC20",
    anvil,
    endpointUrl: emulator.url,
    adapter: (url, timeoutMs) =>
      new TronChainAdapter({ apiUrl: url, tokenAddress: emulator.tokenAddress, timeoutMs, concurrency: 4 }),
    async pay(address, amount) {
      const receipt = await mintTestUsdt(anvil, token, tronAddressToEvm(address), amount);
      return emulator.tronTxId(receipt.transactionHash);
    },
    async stop() {
      await emulator.stop();
      await anvil.stop();
    },
  };
});
