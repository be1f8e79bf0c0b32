import {pickLatest} from '../latest.ts'
import {BATCH, type StoreConnections} from './connections.ts'

interface LatestRow {
  id: number
  name: string
  version: string
  published_at: string
  is_latest: number
  up_latest: number | null
}

/**
 * Recomputes isLatest per name of one source, only for names whose versions changed (all of the
 * source's names when `bulk`, a chunk of about BATCH rows at a time, whole names per chunk). Runs
 * inside the sync's write transaction; reads the upstream flags still in temp.staging.
 */
export async function updateLatest(
  c: StoreConnections,
  source: string,
  names: Set<string>,
  bulk: boolean,
  pause: () => Promise<void>,
): Promise<void> {
  if (!bulk && names.size === 0) return
  const set = c.wstmt('latest_set', 'UPDATE source_versions SET is_latest = ? WHERE id = ?')
  const decide = (group: LatestRow[]) => {
    const best = chooseLatest(group)
    for (const v of group) {
      const want = v === best ? 1 : 0
      if (v.is_latest !== want) set.run(want, v.id)
    }
  }
  const select =
    'SELECT sv.id AS id, sv.name AS name, sv.version AS version, sv.published_at AS published_at, ' +
    'sv.is_latest AS is_latest, s.up_latest AS up_latest FROM source_versions sv ' +
    'LEFT JOIN temp.staging s ON s.name = sv.name AND s.version = sv.version WHERE sv.source = ?'
  if (!bulk) {
    const one = c.wstmt('latest_name', `${select} AND sv.name = ?`)
    for (const name of names) {
      const group = one.all(source, name) as unknown as LatestRow[]
      if (group.length > 0) decide(group)
    }
    return
  }
  const boundary = c.wstmt(
    'latest_boundary',
    'SELECT name FROM source_versions WHERE source = ? AND name > ? ORDER BY name LIMIT 1 OFFSET ?',
  )
  const upTo = c.wstmt('latest_upto', `${select} AND sv.name > ? AND sv.name <= ? ORDER BY sv.name`)
  const rest = c.wstmt('latest_rest', `${select} AND sv.name > ? ORDER BY sv.name`)
  let after = ''
  for (;;) {
    const edge = boundary.get(source, after, BATCH)?.name as string | undefined
    const rows = (edge === undefined
      ? rest.all(source, after)
      : upTo.all(source, after, edge)) as unknown as LatestRow[]
    let group: LatestRow[] = []
    for (const r of rows) {
      if (group.length > 0 && group[0]?.name !== r.name) {
        decide(group)
        group = []
      }
      group.push(r)
    }
    if (group.length > 0) decide(group)
    if (edge === undefined) return
    after = edge
    await pause()
  }
}

function chooseLatest(group: LatestRow[]): LatestRow | undefined {
  // A trusted upstream that flags exactly one version of the name is believed; otherwise our rule.
  if (group.every((v) => v.up_latest !== null)) {
    const flagged = group.filter((v) => v.up_latest === 1)
    if (flagged.length === 1) return flagged[0]
  }
  return pickLatest(group.map((v) => ({version: v.version, publishedAt: v.published_at, v})))?.v
}
