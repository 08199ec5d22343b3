/** The one table `npm run bench` prints (markdown, so it can be pasted into docs/performance.md as is). */
import type { ResultRow } from './result-row.js';

const number = (value: number): string =>
  Math.abs(value) >= 100 ? String(Math.round(value)) : value.toFixed(Math.abs(value) >= 10 ? 1 : 2);

export function resultTable(rows: ResultRow[]): string {
  const lines = [
    '| figure | platform | baseline (same run) | ratio | target | met |',
    '| --- | ---: | --- | ---: | --- | :---: |',
  ];
  for (const r of rows) {
    const value = r.value === null ? 'not measured' : `${number(r.value)} ${r.unit}`;
    const baseline = r.baseline ? `${r.baseline.label}: ${number(r.baseline.value)} ${r.unit}` : '–';
    const ratio = r.ratio === null ? '–' : `${Math.round(r.ratio * 100)} %`;
    const met = r.met === null ? '–' : r.met ? 'yes' : '**no**';
    lines.push(`| ${r.figure} | ${value} | ${baseline} | ${ratio} | ${r.target ?? '–'} | ${met} |`);
  }
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.figure}: ${r.note}`);
  return [...lines, ...(notes.length ? ['', ...notes] : [])].join('\n');
}
