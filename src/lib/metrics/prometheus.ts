/**
 * A minimal Prometheus text-format (exposition format 0.0.4) registry: counters, gauges and
 * histograms with labels. Hand-written because it is ~150 lines and the hot path (one counter
 * increment and one histogram observation per request) must not allocate beyond a map lookup.
 */
export type Labels = Record<string, string>

interface Metric {
  render(out: string[]): void
}

// Label values are escaped as the exposition format requires: backslash, double quote, newline.
function escapeLabel(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : '\\' + c))
}

function labelText(names: readonly string[], values: readonly string[]): string {
  if (names.length === 0) return ''
  return '{' + names.map((n, i) => `${n}="${escapeLabel(values[i] ?? '')}"`).join(',') + '}'
}

function fmt(n: number): string {
  if (n === Infinity) return '+Inf'
  if (n === -Infinity) return '-Inf'
  return Number.isNaN(n) ? 'NaN' : String(n)
}

function header(out: string[], name: string, help: string, type: string): void {
  out.push(
    `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
    `# TYPE ${name} ${type}`,
  )
}

export class Counter implements Metric {
  readonly name: string
  readonly help: string
  readonly labelNames: readonly string[]
  private readonly series = new Map<string, {values: string[]; value: number}>()

  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name
    this.help = help
    this.labelNames = labelNames
  }

  inc(values: readonly string[] = [], by = 1): void {
    const key = values.join('\u0000')
    const s = this.series.get(key)
    if (s) s.value += by
    else this.series.set(key, {values: [...values], value: by})
  }

  get(values: readonly string[] = []): number {
    return this.series.get(values.join('\u0000'))?.value ?? 0
  }

  render(out: string[]): void {
    header(out, this.name, this.help, 'counter')
    for (const s of this.series.values())
      out.push(`${this.name}${labelText(this.labelNames, s.values)} ${fmt(s.value)}`)
  }
}

/**
 * A metric whose series are set, usually at scrape time (memory, stored versions, last sync time).
 * `type: 'counter'` exposes totals kept elsewhere (e.g. by the source syncer) as a counter.
 */
export class Gauge implements Metric {
  readonly name: string
  readonly help: string
  readonly labelNames: readonly string[]
  readonly type: 'gauge' | 'counter'
  private readonly values = new Map<string, {values: string[]; value: number}>()
  collect: (() => void) | undefined

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[] = [],
    collect?: (g: Gauge) => void,
    type: 'gauge' | 'counter' = 'gauge',
  ) {
    this.name = name
    this.help = help
    this.labelNames = labelNames
    this.collect = collect ? () => collect(this) : undefined
    this.type = type
  }

  set(values: readonly string[], value: number): void {
    this.values.set(values.join('\u0000'), {values: [...values], value})
  }

  render(out: string[]): void {
    this.collect?.()
    header(out, this.name, this.help, this.type)
    for (const s of this.values.values())
      out.push(`${this.name}${labelText(this.labelNames, s.values)} ${fmt(s.value)}`)
  }
}

export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
]

export class Histogram implements Metric {
  readonly name: string
  readonly help: string
  readonly labelNames: readonly string[]
  readonly buckets: readonly number[]
  private readonly series = new Map<
    string,
    {values: string[]; counts: number[]; sum: number; count: number}
  >()

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[] = [],
    buckets: readonly number[] = LATENCY_BUCKETS,
  ) {
    this.name = name
    this.help = help
    this.labelNames = labelNames
    this.buckets = buckets
  }

  observe(values: readonly string[], v: number): void {
    const key = values.join('\u0000')
    let s = this.series.get(key)
    if (!s) {
      s = {
        values: [...values],
        counts: new Array<number>(this.buckets.length).fill(0),
        sum: 0,
        count: 0,
      }
      this.series.set(key, s)
    }
    // Counts are stored per bucket and made cumulative at render time (cheaper per observation).
    const b = this.buckets
    for (let i = 0; i < b.length; i++) {
      if (v <= (b[i] as number)) {
        s.counts[i] = (s.counts[i] as number) + 1
        break
      }
    }
    s.sum += v
    s.count++
  }

  render(out: string[]): void {
    header(out, this.name, this.help, 'histogram')
    const names = [...this.labelNames, 'le']
    for (const s of this.series.values()) {
      let cumulative = 0
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i] as number
        out.push(`${this.name}_bucket${labelText(names, [...s.values, fmt(le)])} ${cumulative}`)
      })
      out.push(`${this.name}_bucket${labelText(names, [...s.values, '+Inf'])} ${s.count}`)
      out.push(`${this.name}_sum${labelText(this.labelNames, s.values)} ${fmt(s.sum)}`)
      out.push(`${this.name}_count${labelText(this.labelNames, s.values)} ${s.count}`)
    }
  }
}

export class MetricsRegistry {
  private readonly metrics: Metric[] = []
  /** Runs before rendering, for values that need an async read (e.g. the store's version count). */
  private readonly beforeScrape: (() => Promise<void>)[] = []

  register<M extends Metric>(m: M): M {
    this.metrics.push(m)
    return m
  }

  onScrape(fn: () => Promise<void>): void {
    this.beforeScrape.push(fn)
  }

  async render(): Promise<string> {
    await Promise.all(this.beforeScrape.map((fn) => fn().catch(() => {})))
    const out: string[] = []
    for (const m of this.metrics) m.render(out)
    return out.join('\n') + '\n'
  }
}
