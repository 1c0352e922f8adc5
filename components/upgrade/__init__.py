"""upgrade"""
