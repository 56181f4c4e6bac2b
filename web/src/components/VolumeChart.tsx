import type { VolumePoint } from "../api/types";
import { formatAmount } from "../lib/format";

/**
 * Daily volume as an inline SVG bar chart (no chart library): incoming and outgoing per UTC day,
 * all currencies together (both are USDT). The same numbers are in a table for screen readers.
 */
export function VolumeChart({ points, days }: { points: VolumePoint[]; days: number }) {
  const today = new Date();
  const series: { date: string; incoming: number; outgoing: number }[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i));
    const date = d.toISOString().slice(0, 10);
    const of = points.filter((p) => p.date === date);
    series.push({
      date,
      incoming: of.reduce((s, p) => s + p.incoming, 0),
      outgoing: of.reduce((s, p) => s + p.outgoing, 0),
    });
  }
  const max = Math.max(1, ...series.map((s) => Math.max(s.incoming, s.outgoing)));
  const width = 600;
  const height = 180;
  const pad = { top: 10, bottom: 2, left: 4, right: 4 };
  const slot = (width - pad.left - pad.right) / series.length;
  const bar = Math.max(1, slot / 2 - 1);
  const h = (v: number) => ((height - pad.top - pad.bottom) * v) / max;
  const totalIn = series.reduce((s, p) => s + p.incoming, 0);
  const totalOut = series.reduce((s, p) => s + p.outgoing, 0);
  const summary = `Last ${days} days: ${formatAmount(totalIn)} USDT received, ${formatAmount(totalOut)} USDT sent.`;

  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={summary} preserveAspectRatio="none">
        <line
          x1={pad.left}
          x2={width - pad.right}
          y1={height - pad.bottom}
          y2={height - pad.bottom}
          className="chart-axis"
        />
        {series.map((s, i) => {
          const x = pad.left + i * slot;
          const base = height - pad.bottom;
          return (
            <g key={s.date}>
              <title>{`${s.date}: in ${formatAmount(s.incoming)}, out ${formatAmount(s.outgoing)}`}</title>
              <rect x={x} y={base - h(s.incoming)} width={bar} height={h(s.incoming)} className="chart-in" />
              <rect
                x={x + bar + 1}
                y={base - h(s.outgoing)}
                width={bar}
                height={h(s.outgoing)}
                className="chart-out"
              />
            </g>
          );
        })}
      </svg>
      <div className="chart-axis-labels" aria-hidden="true">
        <span>{series[0]?.date}</span>
        <span>today</span>
      </div>
      <figcaption>
        <span className="legend legend-in">Received</span> <span className="legend legend-out">Sent</span>{" "}
        <span>{summary}</span>
      </figcaption>
    </figure>
  );
}
