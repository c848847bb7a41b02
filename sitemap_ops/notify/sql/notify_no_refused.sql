-- Notify: the view `refused_old` when nothing was set aside yet: empty.
CREATE OR REPLACE TEMP VIEW refused_old AS
SELECT NULL::VARCHAR AS loc, NULL::VARCHAR AS reason, NULL::VARCHAR AS build_id WHERE false;
