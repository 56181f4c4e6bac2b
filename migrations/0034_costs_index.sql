-- Costs in the books (issue #38, part 3): `/metrics` reads this month's finished transfers with a
-- recorded cost (`stablegate_chain_fees_month`), and `stablegate chain costs` the last months. An
-- index on when they finished, only over the rows that carry a cost.
create index outgoing_transfers_costs_idx on outgoing_transfers (finished_at) where fee_paid is not null;
