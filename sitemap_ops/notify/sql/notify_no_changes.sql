-- Notify: the view `changes_new` when no change set is queued: empty.
CREATE OR REPLACE TEMP VIEW changes_new AS SELECT NULL::VARCHAR AS loc WHERE false;
