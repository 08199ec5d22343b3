/**
 * Webhook deliveries per second against a bare undici loop. The figure is taken by the webhook module's own
 * script when it exists; until then the row says it was not measured.
 */
import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { notMeasured, type ResultRow } from './result-row.js';

const BENCH = import.meta.dirname;

export async function runWebhookCases(options: {
  duration: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  const scripts = existsSync(BENCH) ? readdirSync(BENCH).filter((f) => /^webhook-.*\.ts$/.test(f)) : [];
  options.log(`  webhook scripts: ${scripts.length ? scripts.join(', ') : 'none'}`);
  return [
    notMeasured(
      'webhooks.deliveries_per_s',
      'webhook deliveries/s',
      'deliveries/s',
      null,
      `not measured: no webhook benchmark script in bench/ (looked for ${resolve(BENCH, 'webhook-*.ts')})`,
    ),
  ];
}
