/**
 * Test process settings, before any test module loads: embedded `memory://` databases start from
 * a migrated template kept in the system's temporary directory (src/infra/db/database.ts), so an
 * app start in a test skips re-running every migration.
 */
import os from 'node:os';
import path from 'node:path';

process.env.PGLITE_TEMPLATE_DIR ??= path.join(os.tmpdir(), 'svc-pglite-templates');
