import type {PgCluster} from './postgres.ts'

/**
 * From now on, every `staging` table created in database `db` refuses the row of server `name`
 * while the server processes the COPY (a row trigger added by an event trigger), as a
 * statement_timeout or a cancelled backend would refuse it. `name` is a test's own literal.
 * Undone by `DROP EVENT TRIGGER add_refuse`.
 */
export async function refuseStagedName(
  cluster: PgCluster,
  db: string,
  name: string,
): Promise<void> {
  await cluster.psql(
    `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN IF NEW.name = '${name.replaceAll("'", "''")}' THEN RAISE EXCEPTION 'refused row'; END IF;
     RETURN NEW; END $$;
     CREATE FUNCTION add_refuse() RETURNS event_trigger LANGUAGE plpgsql AS $$
     DECLARE r record; BEGIN
       FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
         IF r.object_type = 'table' AND r.object_identity LIKE '%.staging' THEN
           EXECUTE 'CREATE TRIGGER refuse BEFORE INSERT ON ' || r.object_identity ||
             ' FOR EACH ROW EXECUTE FUNCTION refuse()';
         END IF;
       END LOOP; END $$;
     CREATE EVENT TRIGGER add_refuse ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
       EXECUTE FUNCTION add_refuse();`,
    db,
  )
}
