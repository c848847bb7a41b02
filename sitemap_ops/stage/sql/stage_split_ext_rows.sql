-- Stage, a split stage with extensions: the rows of one kind of extension source, for the ranges' size
-- (sitemap_ops.stage.splits.split_bounds), when a source of that kind is one split and the survey of the
-- sources did not count its rows. A template: {view} is one of sitemap_ops.stage.sources.EXTENSION_VIEWS'
-- views, never input.
SELECT count(*) FROM {view}
