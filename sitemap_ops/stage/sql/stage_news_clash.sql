-- Stage 2 (news sources): the pages in the news series' own section (a clash the build refuses).
SELECT count(*) FROM normalized WHERE reason IS NULL AND section = getvariable('news_section')
