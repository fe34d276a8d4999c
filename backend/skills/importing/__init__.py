"""Skill imports from where skills live: https archives (ZIP, tar.gz) and git repositories.

`fetch.fetch_source` downloads a source into a `FetchedTree` (files by path, resolved commit)
through the egress policy and the import limits; `skills.import_skills` turns the skill
folders of a tree into skills (one package per folder, built deterministically) and
`skills.sync_skill` re-imports one from its recorded `status.source`.
"""
