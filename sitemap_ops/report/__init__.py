"""Report step: one self-contained HTML page per build, with the build's figures, charts, samples and history."""
