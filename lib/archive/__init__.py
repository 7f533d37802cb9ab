"""The web archive: WARC files, their record fields and their CDXJ indexes."""
