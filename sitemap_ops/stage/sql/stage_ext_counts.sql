-- Stage 2d: videos published, news articles published, news articles too old for the news series.
SELECT
    (SELECT count(*) FROM ext_video_checked WHERE issue IS NULL),
    (SELECT count(*) FROM news_ext),
    (SELECT count(*) FROM ext_news_checked WHERE issue = 'too_old')
