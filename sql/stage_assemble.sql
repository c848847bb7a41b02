-- Stage 3, partitioned: one sorted partition's rows of one section (the variable assemble_section), in file
-- order (URL order). A template: sitemap_ops.stage.partitions fills {view} with its own view's name.
SELECT * FROM {view} WHERE section = getvariable('assemble_section')
