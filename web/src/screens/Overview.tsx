import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router-dom";
import { get, getList } from "../api/client";
import type { Balance, Transaction, VolumePoint } from "../api/types";
import { TransactionTable } from "../components/TransactionTable";
import { Empty, ErrorNotice, Loading, PageHeader } from "../components/ui";
import { VolumeChart } from "../components/VolumeChart";
import { useCurrencies } from "../lib/currencies";
import { formatAmount } from "../lib/format";
import { useEnvKey, useSession } from "../session";

const DAYS = 30;

export default function Overview() {
  const { environment } = useSession();
  const { label, unit } = useCurrencies();
  const balances = useQuery({
    queryKey: useEnvKey("balance"),
    queryFn: () => get<Balance[]>("/api/v1/dashboard/balance"),
    refetchInterval: 10_000,
  });
  const recent = useQuery({
    queryKey: useEnvKey("transactions", "recent"),
    queryFn: () => getList<Transaction>("/api/v1/dashboard/transactions", { limit: 5 }),
    refetchInterval: 10_000,
  });
  const volume = useQuery({
    queryKey: useEnvKey("volume", DAYS),
    queryFn: () => get<VolumePoint[]>("/api/v1/dashboard/volume", { days: DAYS }),
  });

  return (
    <>
      <PageHeader title="Overview" />
      <section aria-labelledby="balances-title">
        <h2 id="balances-title">Balances</h2>
        {balances.isPending ? <Loading /> : null}
        <ErrorNotice error={balances.error} />
        {balances.data ? (
          <div className="cards">
            {balances.data.map((b) => (
              <article
                className="card balance"
                key={b.currencyType}
                aria-label={`${label(b.currencyType)} balance`}
              >
                <h3>{label(b.currencyType)}</h3>
                <p className="balance-main">
                  <span className="visually-hidden">Available: </span>
                  <span data-testid={`available-${b.currencyType}`}>{formatAmount(b.available)}</span>
                  <span className="balance-unit"> {unit(b.currencyType)} available</span>
                </p>
                <dl className="balance-more">
                  <div>
                    <dt>Held for payouts and withdrawals</dt>
                    <dd>{formatAmount(b.held)}</dd>
                  </div>
                  <div>
                    <dt>Total</dt>
                    <dd>{formatAmount(b.total)}</dd>
                  </div>
                </dl>
              </article>
            ))}
          </div>
        ) : null}
      </section>

      <section aria-labelledby="volume-title" className="card">
        <h2 id="volume-title">Volume, last {DAYS} days</h2>
        {volume.isPending ? <Loading /> : null}
        <ErrorNotice error={volume.error} />
        {volume.data ? <VolumeChart points={volume.data} days={DAYS} /> : null}
      </section>

      <section aria-labelledby="recent-title">
        <div className="section-header">
          <h2 id="recent-title">Recent transactions</h2>
          <Link to="/transactions">All transactions →</Link>
        </div>
        {recent.isPending ? <Loading /> : null}
        <ErrorNotice error={recent.error} />
        {recent.data && recent.data.data.length === 0 ? (
          <Empty title="No transactions yet">
            {environment === "sandbox" ? (
              <p>
                <Link to="/sessions">Create a test checkout session</Link> and pay it with the simulator to
                see your first deposit arrive.
              </p>
            ) : (
              <p>Payments your customers make appear here.</p>
            )}
          </Empty>
        ) : null}
        {recent.data && recent.data.data.length > 0 ? (
          <TransactionTable rows={recent.data.data} caption="Recent transactions" />
        ) : null}
      </section>
    </>
  );
}
