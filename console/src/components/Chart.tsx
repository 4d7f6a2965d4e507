import { useId } from 'react';
import { TableWrap } from './common';

export interface Bar {
  label: string;
  value: number;
  /** A part of `value` drawn in the warning colour (errors of the requests). */
  part?: number;
}

/**
 * A bar chart as plain SVG, with its figures in a table beside it for screen readers and the
 * keyboard (no chart library: a few dozen bars do not need one).
 */
export function BarChart({ title, bars, unit, partName }: { title: string; bars: Bar[]; unit: string; partName?: string }) {
  const id = useId();
  const max = Math.max(1, ...bars.map((b) => b.value));
  const w = 600;
  const h = 160;
  const gap = 2;
  const bw = bars.length ? Math.max(1, w / bars.length - gap) : 0;
  const total = bars.reduce((s, b) => s + b.value, 0);
  return (
    <figure className="chart" aria-labelledby={`${id}-c`}>
      <figcaption id={`${id}-c`}>
        {title}: {total} {unit} in all
      </figcaption>
      <svg viewBox={`0 0 ${w} ${h}`} preserveAspectRatio="none" aria-hidden="true" focusable="false">
        <line x1="0" y1={h - 0.5} x2={w} y2={h - 0.5} className="axis" />
        {bars.map((b, i) => {
          const bh = (b.value / max) * (h - 4);
          const ph = ((b.part ?? 0) / max) * (h - 4);
          const x = i * (bw + gap);
          return (
            <g key={`${b.label}${i}`}>
              <rect x={x} y={h - bh} width={bw} height={bh} className="bar">
                <title>
                  {b.label}: {b.value} {unit}
                </title>
              </rect>
              {ph > 0 ? <rect x={x} y={h - ph} width={bw} height={ph} className="bar part" /> : null}
            </g>
          );
        })}
      </svg>
      <details>
        <summary>Figures as a table</summary>
        <TableWrap label={title}>
          <table>
            <caption className="sr-only">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Period</th>
                <th scope="col">{unit}</th>
                {partName ? <th scope="col">{partName}</th> : null}
              </tr>
            </thead>
            <tbody>
              {bars.map((b, i) => (
                <tr key={`${b.label}${i}`}>
                  <th scope="row">{b.label}</th>
                  <td>{b.value}</td>
                  {partName ? <td>{b.part ?? 0}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      </details>
    </figure>
  );
}
