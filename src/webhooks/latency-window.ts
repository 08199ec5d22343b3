/** The last `size` latencies measured, for a mean and percentiles that follow current conditions. */
export class LatencyWindow {
  private readonly values: Float64Array;
  private next = 0;
  private count = 0;

  constructor(private readonly size: number) {
    this.values = new Float64Array(size);
  }

  add(ms: number): void {
    this.values[this.next] = ms;
    this.next = (this.next + 1) % this.size;
    if (this.count < this.size) this.count += 1;
  }

  mean(): number {
    if (this.count === 0) return 0;
    let sum = 0;
    for (let i = 0; i < this.count; i++) sum += this.values[i]!;
    return sum / this.count;
  }

  /** The value below which `q` (0..1) of the window lies; 0 when nothing was measured. */
  percentile(q: number): number {
    if (this.count === 0) return 0;
    const sorted = Array.from(this.values.subarray(0, this.count)).sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  }
}
