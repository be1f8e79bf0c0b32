#!/usr/bin/env node
// Development entry: Node 24 runs src/**/*.ts directly (type stripping), so no build step is needed.
import {launch} from './launch.js'

await launch({entryUrl: import.meta.url, sources: true})
