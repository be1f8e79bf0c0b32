export function nodeTooOld(version: string, range: string): boolean
export function launch(options: {entryUrl: string; sources?: boolean}): Promise<void>
