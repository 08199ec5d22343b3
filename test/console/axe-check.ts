import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Runs axe-core (injected once per page) on the whole document: its violations, and how many rules passed. */
export async function axeCheck(page: Page): Promise<{ violations: string[]; passed: number }> {
  return (await page.evaluate(`(async () => {
    if (!window.axe) { ${AXE}\n }
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return {
      passed: r.passes.length,
      violations: r.violations.map((v) => v.id + ': ' + v.help + ' — ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')),
    };
  })()`)) as { violations: string[]; passed: number };
}
