"""The ladder of supporters of known quality (``emoharbor ladder``): does a whole EmoHarbor run order them?"""
