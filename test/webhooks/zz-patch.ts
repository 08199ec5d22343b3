import Database from 'better-sqlite3';
const Stmt = new Database(':memory:').prepare('select 1').constructor.prototype as Record<string, (...a: unknown[]) => unknown>;
export const qstats = new Map<string, { n: number; ms: number }>();
for (const m of ['run', 'all', 'get', 'iterate']) {
  const orig = Stmt[m]!;
  Stmt[m] = function (this: { source: string }, ...args: unknown[]) {
    const t0 = performance.now();
    try { return orig.apply(this, args); } finally {
      const key = this.source.replace(/\s+/g, ' ').replace(/\(\?(, \?)*\)/g, '(?..)').slice(0, 110);
      const s = qstats.get(key) ?? { n: 0, ms: 0 };
      s.n++; s.ms += performance.now() - t0; qstats.set(key, s);
    }
  };
}
process.on('exit', () => {
  for (const [k, v] of [...qstats].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)) console.log(v.ms.toFixed(0).padStart(6), 'ms', String(v.n).padStart(6), k);
});
export const fullSql = new Map<string, string>();
const origPrepare = (Database.prototype as any).prepare;
(Database.prototype as any).prepare = function (this: any, src: string) {
  if (src.startsWith('with "locked"') && !fullSql.has('claim')) {
    fullSql.set('claim', src);
    try { console.log(this.prepare('explain query plan ' + src).all(...Array((src.match(/\?/g) ?? []).length).fill('x')).map((r: any) => r.detail).join('\n')); } catch (e) { console.log('explain failed', String(e)); }
  }
  return origPrepare.call(this, src);
};
