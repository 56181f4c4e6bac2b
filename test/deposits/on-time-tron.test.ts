import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import { TronChainAdapter } from "../../src/chains/tron/tron-adapter.js";
import { deployTestUsdt, sendMintTestUsdt, setAutomine, startAnvil } from "../support/chain/anvil.js";
import { startTronEmulator } from "../support/chain/tron-emulator.js";
import { onTimeSuite } from "./on-time-suite.js";

onTimeSuite("the TRON emulator (USDT-TRC20, 3 confirmations, automine off)", async () => {
  const anvil = await startAnvil();
  const token = await deployTestUsdt(anvil);
  const emulator = await startTronEmulator(anvil, token);
  await setAutomine(anvil, false);
  return {
    network: "USDT-TRC20",
    anvil,
    adapter: new TronChainAdapter({
      apiUrl: emulator.url,
      tokenAddress: emulator.tokenAddress,
      timeoutMs: 5_000,
    }),
    async send(address, amount) {
      await sendMintTestUsdt(anvil, token, tronAddressToEvm(address), amount);
    },
    async stop() {
      await emulator.stop();
      await anvil.stop();
    },
  };
});
