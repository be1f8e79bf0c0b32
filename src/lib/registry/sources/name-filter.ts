import type {NameFilter} from '../types.ts'

/**
 * `filter.names.include/exclude` (contract §1): globs over server names where `*` matches any run
 * of characters (including `/` and `.`) and everything else is literal. A name passes when it
 * matches some include glob (or no includes are given) and no exclude glob; exclude wins.
 */
export type NamePredicate = (name: string) => boolean

function globToRegExp(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'))
    .join('.*')
  return new RegExp(`^${body}$`)
}

export function compileNameFilter(filter: NameFilter | undefined): NamePredicate {
  const include = (filter?.include ?? []).map(globToRegExp)
  const exclude = (filter?.exclude ?? []).map(globToRegExp)
  if (include.length === 0 && exclude.length === 0) return () => true
  return (name) =>
    (include.length === 0 || include.some((re) => re.test(name))) &&
    !exclude.some((re) => re.test(name))
}
